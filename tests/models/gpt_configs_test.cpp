// The shipped GPT configs: each parses, builds its model with the expected exact
// parameter count, and the 124M model (context cut to 64, batch 1) takes two
// AdamW steps on the CPU with a finite, falling loss.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "core/config/load.h"
#include "core/ops.h"
#include "core/optim/adamw.h"
#include "core/optim/param_groups.h"
#include "core/random.h"
#include "models/registry.h"

using namespace strata;

namespace {

std::string source_dir() {
  const char* dir = std::getenv("STRATA_SOURCE_DIR");
  return dir && *dir ? dir : STRATA_TEST_SOURCE_DIR;
}

// Tied head: V C + T C (embeddings) + L (4 C^2 + 4 C attention, 8 C^2 + 5 C MLP,
// 4 C two LayerNorms) + 2 C (final LayerNorm).
int64_t gpt_params(int64_t V, int64_t T, int64_t L, int64_t C) {
  return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
}

}  // namespace

TEST(GptConfigs, TinyBuildsAFewMillionParameters) {
  TrainConfig c = load_config(source_dir() + "/configs/gpt_tiny.yaml");
  ASSERT_EQ(c.model.name, "gpt");
  EXPECT_EQ(c.model.vocab_size, 256);
  auto m = models::build_model(models::spec_from_config(c));
  EXPECT_EQ(m->num_parameters(), gpt_params(256, c.model.context, c.model.layers, c.model.width));
  EXPECT_EQ(m->num_parameters(), 3290624);
  Tensor logits = (*m)(Tensor::from_vector_i64({72, 105, 33}, {1, 3}));
  EXPECT_EQ(logits.shape(), (Shape{1, 3, 256}));
}

TEST(GptConfigs, Gpt2SmallHas124MParametersAndTrains) {
  TrainConfig c = load_config(source_dir() + "/configs/gpt2_124m.yaml");
  EXPECT_EQ(c.precision.dtype, "bf16");
  models::ModelSpec s = models::spec_from_config(c);
  {
    auto full = models::build_model(s);
    EXPECT_EQ(full->num_parameters(), gpt_params(50304, 1024, 12, 768));
    EXPECT_EQ(full->num_parameters(), 124475904);
  }
  s.context = 64;
  auto m = models::build_model(s);
  EXPECT_EQ(m->num_parameters(), 124475904 - (1024 - 64) * 768);

  const int64_t T = 64, V = s.vocab_size;
  Generator gen(5);
  std::vector<int64_t> ids(T + 1);
  for (auto& id : ids) id = static_cast<int64_t>(gen.next_u64() % static_cast<uint64_t>(V));
  Tensor x = Tensor::from_vector_i64({ids.begin(), ids.end() - 1}, {1, T});
  Tensor y = Tensor::from_vector_i64({ids.begin() + 1, ids.end()}, {T});
  AdamW opt(weight_decay_groups(*m, c.optimizer.weight_decay),
            AdamWOptions{.lr = c.optimizer.lr,
                         .beta1 = c.optimizer.beta1,
                         .beta2 = c.optimizer.beta2,
                         .eps = c.optimizer.eps,
                         .weight_decay = c.optimizer.weight_decay});
  std::vector<double> losses;
  for (int step = 0; step < 3; ++step) {  // two steps, then the loss after them
    m->zero_grad();
    Tensor loss = cross_entropy(reshape((*m)(x), {T, V}), y);
    losses.push_back(loss.item());
    ASSERT_TRUE(std::isfinite(losses.back())) << "step " << step;
    if (step == 2) break;
    loss.backward();
    opt.step();
  }
  // GPT-2 init starts near the uniform guess ln V; the same batch then fits better.
  EXPECT_NEAR(losses[0], std::log(double(V)), 0.5);
  EXPECT_LT(losses[1], losses[0]);
  EXPECT_LT(losses[2], losses[1]);
}
