// The GPT's structure: output shape, the tied head (one parameter, gradient from
// both uses), GPT-2 initialisation statistics, causality, config errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "base/error.h"
#include "core/ops.h"
#include "core/precision.h"
#include "models/registry.h"

using namespace strata;

namespace {

models::ModelSpec tiny(double dropout = 0.0) {
  models::ModelSpec s;
  s.name = "gpt";
  s.vocab_size = 50;
  s.context = 16;
  s.layers = 2;
  s.heads = 4;
  s.width = 32;
  s.dropout = dropout;
  s.seed = 7;
  return s;
}

Tensor ids_of(const std::vector<int64_t>& v, int64_t B, int64_t T) {
  return Tensor::from_vector_i64(v, {B, T});
}

Tensor param(const Module& m, const std::string& name) {
  for (auto& [n, t] : m.named_parameters())
    if (n == name) return t;
  ADD_FAILURE() << "no parameter " << name;
  return Tensor();
}

double stddev(const Tensor& t) {
  auto v = t.to_float_vector();
  double s = 0, s2 = 0;
  for (float x : v) s += x, s2 += double(x) * x;
  double m = s / v.size();
  return std::sqrt(s2 / v.size() - m * m);
}

}  // namespace

TEST(Gpt, IsRegisteredAndMapsIdsToLogits) {
  auto names = models::model_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "gpt"), names.end());
  auto m = models::build_model(tiny());
  std::vector<int64_t> v(2 * 5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 7) % 50);
  Tensor y = (*m)(ids_of(v, 2, 5));
  EXPECT_EQ(y.shape(), (Shape{2, 5, 50}));
}

TEST(Gpt, HeadIsTiedToTheTokenEmbedding) {
  auto m = models::build_model(tiny());
  std::set<std::string> names;
  for (auto& [n, t] : m->named_parameters()) names.insert(n);
  EXPECT_TRUE(names.count("wte.weight"));
  EXPECT_TRUE(names.count("h.1.attn.c_attn.weight"));
  EXPECT_TRUE(names.count("h.1.mlp.c_proj.bias"));
  EXPECT_TRUE(names.count("ln_f.weight"));
  // no separate head matrix: V*C + T*C + layers * 12 C^2 + 13 C + 2 C (ln_f)
  const int64_t C = 32, V = 50, T = 16, L = 2;
  EXPECT_EQ(m->num_parameters(), V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C);
  // A token that only appears as a target still gets a gradient through the head.
  Tensor logits = (*m)(ids_of({1, 2, 3}, 1, 3));
  Tensor loss = cross_entropy(reshape(logits, {3, V}), Tensor::from_vector_i64({4, 4, 4}, {3}));
  loss.backward();
  auto g = param(*m, "wte.weight").grad().to_float_vector();
  double row4 = 0;
  for (int64_t c = 0; c < C; ++c) row4 += std::abs(g[static_cast<size_t>(4 * C + c)]);
  EXPECT_GT(row4, 0.0);
}

TEST(Gpt, Gpt2Initialisation) {
  models::ModelSpec s = tiny();
  s.width = 64;
  s.layers = 8;
  auto m = models::build_model(s);
  const double resid = 0.02 / std::sqrt(16.0);
  EXPECT_NEAR(stddev(param(*m, "wte.weight")), 0.02, 0.002);
  EXPECT_NEAR(stddev(param(*m, "h.0.attn.c_attn.weight")), 0.02, 0.002);
  EXPECT_NEAR(stddev(param(*m, "h.3.mlp.c_fc.weight")), 0.02, 0.002);
  EXPECT_NEAR(stddev(param(*m, "h.0.attn.c_proj.weight")), resid, resid * 0.1);
  EXPECT_NEAR(stddev(param(*m, "h.7.mlp.c_proj.weight")), resid, resid * 0.1);
  for (float b : param(*m, "h.2.attn.c_attn.bias").to_float_vector()) EXPECT_EQ(b, 0.0f);
  for (float w : param(*m, "h.2.ln_1.weight").to_float_vector()) EXPECT_EQ(w, 1.0f);
  for (float b : param(*m, "ln_f.bias").to_float_vector()) EXPECT_EQ(b, 0.0f);
  // the same seed gives the same weights
  auto again = models::build_model(s);
  EXPECT_EQ(param(*m, "h.5.mlp.c_fc.weight").to_float_vector(),
            param(*again, "h.5.mlp.c_fc.weight").to_float_vector());
}

TEST(Gpt, IsCausal) {
  auto m = models::build_model(tiny());
  Tensor a = (*m)(ids_of({3, 9, 27, 31, 5, 6}, 1, 6));
  Tensor b = (*m)(ids_of({3, 9, 27, 0, 5, 6}, 1, 6));  // position 3 changed
  auto va = a.to_float_vector(), vb = b.to_float_vector();
  for (size_t i = 0; i < 3 * 50; ++i) ASSERT_EQ(va[i], vb[i]) << "logit " << i << " saw a later token";
  double later = 0;
  for (size_t i = 3 * 50; i < va.size(); ++i) later += std::abs(va[i] - vb[i]);
  EXPECT_GT(later, 0.0);
}

TEST(Gpt, DropoutOnlyInTraining) {
  auto m = models::build_model(tiny(0.5));
  Tensor ids = ids_of({1, 2, 3, 4}, 1, 4);
  m->eval();
  EXPECT_EQ((*m)(ids).to_float_vector(), (*m)(ids).to_float_vector());
  m->train();
  EXPECT_NE((*m)(ids).to_float_vector(), (*m)(ids).to_float_vector());
}

TEST(Gpt, RejectsBadShapesAndSpecs) {
  auto m = models::build_model(tiny());
  std::vector<int64_t> long_ids(17, 1);
  EXPECT_THROW((*m)(ids_of(long_ids, 1, 17)), ShapeError);
  models::ModelSpec s = tiny();
  s.heads = 5;
  EXPECT_THROW(models::build_model(s), ConfigError);
  s = tiny();
  s.layers = 0;
  EXPECT_THROW(models::build_model(s), ConfigError);
}

TEST(Gpt, Bf16AutocastStaysCloseToFp32) {
  auto m = models::build_model(tiny());
  Tensor ids = ids_of({3, 1, 4, 1, 5, 9, 2, 6}, 2, 4);
  Tensor labels = Tensor::from_vector_i64({1, 4, 1, 5, 9, 2, 6, 5}, {8});
  double f32 = cross_entropy(reshape((*m)(ids), {8, 50}), labels).item();
  AutocastGuard guard(DType::bf16);
  Tensor logits = (*m)(ids);
  EXPECT_EQ(logits.dtype(), DType::bf16);
  Tensor loss = cross_entropy(reshape(logits, {8, 50}), labels);
  EXPECT_NEAR(loss.item(), f32, 2e-2 * f32);
  loss.backward();
  for (auto& [n, p] : m->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << n;
    EXPECT_EQ(p.grad().dtype(), DType::f32) << n << ": master gradients stay FP32";
  }
}
