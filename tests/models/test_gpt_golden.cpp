// strata's GPT against an independent PyTorch implementation
// (tests/fixtures/make_gpt_golden.py): the same weights, copied in by name, must
// give the same logits, loss and gradient of every parameter, in FP32.

#include <gtest/gtest.h>

#include <cmath>

#include "core/ops.h"
#include "golden_expect.h"
#include "golden_file.h"
#include "models/registry.h"

using namespace strata;
using namespace strata::testing;

TEST(GptGolden, LogitsLossAndGradientsMatchPyTorch) {
  auto g = load_golden(STRATA_GPT_GOLDEN);
  models::ModelSpec s;
  s.name = "gpt";
  s.vocab_size = 50;
  s.context = 16;
  s.layers = 2;
  s.heads = 4;
  s.width = 32;
  s.dropout = 0.0;
  auto model = models::build_model(s);

  size_t copied = 0;
  for (auto& [name, p] : model->named_parameters()) {
    auto it = g.find("param/" + name);
    ASSERT_NE(it, g.end()) << "no golden weights for " << name;
    ASSERT_EQ(it->second.shape, p.shape()) << name;
    Tensor src = Tensor::from_vector(it->second.f, p.shape());
    p.copy_(src);
    ++copied;
  }
  size_t golden_params = 0;
  for (auto& [k, r] : g) golden_params += k.rfind("param/", 0) == 0;
  EXPECT_EQ(copied, golden_params) << "the two models have different parameter sets";

  const Record& ids = g.at("ids");
  const Record& targets = g.at("targets");
  const int64_t B = ids.shape[0], T = ids.shape[1];
  Tensor logits = (*model)(Tensor::from_vector_i64(ids.i64, {B, T}));
  ASSERT_EQ(logits.shape(), g.at("logits").shape);
  expect_close(logits.to_float_vector(), g.at("logits").f, 1e-5, "logits");

  Tensor loss =
      cross_entropy(reshape(logits, {B * T, s.vocab_size}), Tensor::from_vector_i64(targets.i64, {B * T}));
  EXPECT_NEAR(loss.item(), g.at("loss").f[0], 1e-5 * std::abs(g.at("loss").f[0]));
  loss.backward();
  for (auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name << " got no gradient";
    expect_close(p.grad().to_float_vector(), g.at("grad/" + name).f, 1e-5, "grad of " + name);
  }
}
