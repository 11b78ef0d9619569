// How the optimizers drive the multi-tensor device steps: a half gradient is
// read as it is (the same step, bit for bit, as its FP32 widening); AdamW groups
// parameters by their own step count, so a parameter that skipped a step follows
// the trajectory it would have alone; step counts kept on the host survive a
// state() / load_state() round trip into a fresh optimizer.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/random.h"
#include "nn/optim/adamw.h"
#include "nn/optim/sgd.h"

using namespace strata;

namespace {
Tensor param(Generator& g, int64_t n) { return Tensor::uniform({n}, -1, 1, g).set_requires_grad(); }

void expect_bits(const Tensor& a, const Tensor& b) {
  auto x = a.to_float_vector(), y = b.to_float_vector();
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(std::memcmp(&x[i], &y[i], 4), 0) << "element " << i;
}
}  // namespace

TEST(OptimizerSteps, HalfGradientsStepAsTheirFp32Widening) {
  for (DType half : {DType::f16, DType::bf16}) {
    Generator g(1);
    Tensor a = param(g, 100), b = a.clone().set_requires_grad();
    Tensor grad = Tensor::uniform({100}, -2, 2, g, half);
    SGD sa({{"w", a}}, SGDOptions{.lr = 0.1, .momentum = 0.9});
    AdamW aa({{"w", b}}, AdamWOptions{});
    Tensor a32 = a.clone().set_requires_grad(), b32 = b.clone().set_requires_grad();
    SGD s32({{"w", a32}}, SGDOptions{.lr = 0.1, .momentum = 0.9});
    AdamW a32opt({{"w", b32}}, AdamWOptions{});
    for (int step = 0; step < 3; ++step) {
      a.set_grad(grad);
      b.set_grad(grad);
      a32.set_grad(grad.to(DType::f32));
      b32.set_grad(grad.to(DType::f32));
      sa.step();
      aa.step();
      s32.step();
      a32opt.step();
    }
    expect_bits(a, a32);
    expect_bits(b, b32);
  }
}

TEST(OptimizerSteps, AdamWParameterThatSkippedAStepKeepsItsOwnCount) {
  Generator g(2);
  Tensor a = param(g, 40), b = param(g, 7);
  Tensor b_alone = b.clone().set_requires_grad();
  Tensor ga = Tensor::uniform({40}, -1, 1, g), gb = Tensor::uniform({7}, -1, 1, g);
  AdamW both({{"a", a}, {"b", b}}, AdamWOptions{.lr = 0.01}),
      alone({{"b", b_alone}}, AdamWOptions{.lr = 0.01});
  for (int step = 0; step < 4; ++step) {
    a.set_grad(ga);
    if (step != 1) b.set_grad(gb);  // b has no gradient in step 1: its count does not advance
    both.step();
    both.zero_grad();
    if (step != 1) {
      b_alone.set_grad(gb);
      alone.step();
    }
  }
  expect_bits(b, b_alone);
  auto s = both.state();
  EXPECT_EQ(s.tensors.at("a.step").item(), 4.0);
  EXPECT_EQ(s.tensors.at("b.step").item(), 3.0);
}

TEST(OptimizerSteps, AdamWStepCountsSurviveAStateRoundTrip) {
  Generator g(3);
  Tensor w = param(g, 16), grad = Tensor::uniform({16}, -1, 1, g);
  Tensor w2 = w.clone().set_requires_grad();
  AdamW run({{"w", w}}, AdamWOptions{});
  for (int step = 0; step < 5; ++step) {
    w.set_grad(grad);
    run.step();
  }
  // the same first three steps, then resume in a fresh optimizer from the state
  AdamW first({{"w", w2}}, AdamWOptions{});
  for (int step = 0; step < 3; ++step) {
    w2.set_grad(grad);
    first.step();
  }
  AdamW resumed({{"w", w2}}, AdamWOptions{});
  resumed.load_state(first.state());
  for (int step = 0; step < 2; ++step) {
    w2.set_grad(grad);
    resumed.step();
  }
  expect_bits(w, w2);
  EXPECT_EQ(resumed.state().tensors.at("w.step").item(), 5.0);
}
