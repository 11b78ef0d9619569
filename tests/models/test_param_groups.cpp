// Weight-decay parameter groups on the GPT, and AdamW taking groups: a grouped
// step equals separate AdamW instances with each group's weight decay.
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "core/ops.h"
#include "models/registry.h"
#include "nn/optim/adamw.h"
#include "nn/optim/param_groups.h"

using namespace strata;

namespace {

std::shared_ptr<Module> tiny_gpt() {
  models::ModelSpec s;
  s.name = "gpt";
  s.vocab_size = 20;
  s.context = 8;
  s.layers = 2;
  s.heads = 2;
  s.width = 8;
  s.seed = 3;
  return models::build_model(s);
}

void forward_backward(Module& m) {
  m.zero_grad();
  Tensor logits = m(Tensor::from_vector_i64({1, 5, 7, 2, 9, 4}, {1, 6}));
  cross_entropy(reshape(logits, {6, 20}), Tensor::from_vector_i64({5, 7, 2, 9, 4, 1}, {6})).backward();
}

}  // namespace

TEST(ParamGroups, DecayOnlyLinearWeightMatrices) {
  auto m = tiny_gpt();
  auto g = weight_decay_groups(*m, 0.1);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].weight_decay, 0.1);
  EXPECT_EQ(g[1].weight_decay, 0.0);
  EXPECT_EQ(g[0].params.size() + g[1].params.size(), m->named_parameters().size());
  for (auto& [n, t] : g[0].params) {
    EXPECT_EQ(t.dim(), 2) << n;
    EXPECT_TRUE(n.find("c_attn.weight") != std::string::npos ||
                n.find("c_proj.weight") != std::string::npos || n.find("c_fc.weight") != std::string::npos)
        << n;
  }
  EXPECT_EQ(g[0].params.size(), 2u * 4u);  // per block: c_attn, attn c_proj, c_fc, mlp c_proj
  std::set<std::string> nodecay;
  for (auto& [n, t] : g[1].params) nodecay.insert(n);
  for (const char* n :
       {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias", "h.0.ln_1.weight", "h.1.mlp.c_fc.bias"})
    EXPECT_TRUE(nodecay.count(n)) << n;
}

TEST(ParamGroups, GroupedAdamWEqualsOneOptimizerPerGroup) {
  auto a = tiny_gpt(), b = tiny_gpt();
  AdamWOptions opt{.lr = 0.01, .weight_decay = 0.5};
  AdamW grouped(weight_decay_groups(*a, 0.5), opt);
  auto gb = weight_decay_groups(*b, 0.5);
  AdamW decay(gb[0].params, opt), plain(gb[1].params, AdamWOptions{.lr = 0.01, .weight_decay = 0.0});
  EXPECT_EQ(grouped.weight_decay_of("wte.weight"), 0.0);
  EXPECT_EQ(grouped.weight_decay_of("h.0.attn.c_attn.weight"), 0.5);
  for (int step = 0; step < 3; ++step) {
    forward_backward(*a);
    forward_backward(*b);
    grouped.step();
    decay.step();
    plain.step();
  }
  auto pa = a->named_parameters(), pb = b->named_parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(pa[i].second.to_float_vector(), pb[i].second.to_float_vector()) << pa[i].first;
  // and decay made a difference: an ungrouped AdamW (decay on everything) differs on the embeddings
  auto c = tiny_gpt();
  AdamW all(c->named_parameters(), opt);
  for (int step = 0; step < 3; ++step) {
    forward_backward(*c);
    all.step();
  }
  EXPECT_NE(c->named_parameters()[0].second.to_float_vector(), pa[0].second.to_float_vector());
}

TEST(ParamGroups, AParameterInTwoGroupsIsAnError) {
  auto m = tiny_gpt();
  auto g = weight_decay_groups(*m, 0.1);
  g[1].params.push_back(g[0].params[0]);
  EXPECT_THROW(AdamW(g, AdamWOptions{}), Error);
}
