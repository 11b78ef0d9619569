// The shipped GPT configs: each parses, builds its model with the expected exact
// parameter count, and the 124M model (context cut to 64, batch 1) trains three
// steps on the CPU through TokenLoader and Trainer with a finite, falling loss.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/communicator.h"
#include "core/ops.h"
#include "core/random.h"
#include "data/format/token_packer.h"
#include "data/loader/token_loader.h"
#include "models/registry.h"
#include "train/config/load.h"
#include "train/trainer/trainer.h"

using namespace strata;
namespace fs = std::filesystem;

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
  EXPECT_EQ(m->num_parameters(), 3257856);
  Tensor logits = (*m)(Tensor::from_vector_i64({72, 105, 33}, {1, 3}));
  EXPECT_EQ(logits.shape(), (Shape{1, 3, 256}));
}

// The 124M config as shipped (bf16, AdamW with decay groups, clipping) trained by
// strata-train's path: a uint16 token file (nanoGPT's format) packed by the real
// packer, served by TokenLoader, stepped by Trainer with the causal-LM task.
// Context cut to 64 and batch 1 for the CPU; one 65-token window, so every epoch
// is the same batch and three optimizer steps must fit it better.
TEST(GptConfigs, Gpt2SmallHas124MParametersAndTrains) {
  TrainConfig c = load_config(source_dir() + "/configs/gpt2_124m.yaml");
  EXPECT_EQ(c.precision.dtype, "bf16");
  EXPECT_TRUE(c.optimizer.decay_groups);
  {
    auto full = models::build_model(models::spec_from_config(c));
    EXPECT_EQ(full->num_parameters(), gpt_params(50304, 1024, 12, 768));
    EXPECT_EQ(full->num_parameters(), 124475904);
  }
  const int64_t T = 64;
  const fs::path dir = fs::temp_directory_path() / ("strata-gpt2-steps-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    Generator gen(5);
    std::ofstream f(dir / "tokens.bin", std::ios::binary);
    for (int64_t i = 0; i < T + 1; ++i) {
      auto id = static_cast<uint16_t>(gen.next_u64() % 50257);  // GPT-2's BPE ids
      f.write(reinterpret_cast<const char*>(&id), 2);
    }
  }
  data::TokenPackOptions po;
  po.pack.out_url = (dir / "data").string();
  po.val_fraction = 0;
  po.vocab_size = 50257;
  data::pack_tokens({{(dir / "tokens.bin").string(), data::TokenFormat::uint16}}, po);

  c.model.context = T;
  c.data.batch_size = 1;
  c.trainer.accumulate = 1;
  c.trainer.epochs = 3;
  c.trainer.max_steps = 0;
  c.schedule.name = "constant";  // the config's 2000-step warmup would keep the rate at ~0
  c.schedule.warmup_steps = 0;
  c.checkpoint.every_epochs = 0;
  c.logging.console = "off";
  c.logging.tensorboard = false;
  data::TokenLoaderOptions lo;
  lo.url = (dir / "data" / "train").string();
  lo.cache_dir = dir / "cache";
  lo.cache_bytes = int64_t{1} << 20;
  lo.context = T;
  lo.batch_size = 1;
  data::TokenLoader train(lo);
  lo.shuffle = false;
  lo.remainder = data::Remainder::kPad;
  data::TokenLoader test(lo);
  EXPECT_EQ(train.batches_per_epoch(), 1);

  const models::ModelSpec spec = models::spec_from_config(c);
  auto model = models::build_model(spec);
  SingleProcessCommunicator comm;
  Trainer before_trainer(c, (dir / "run0").string(), model, make_task("causal_lm", {}), comm);
  const double before = before_trainer.evaluate(test).loss;
  Trainer trainer(c, (dir / "run").string(), model, make_task("causal_lm", {}), comm);
  TrainSummary s = trainer.fit(train, nullptr, &test);
  EXPECT_EQ(s.steps, 3);
  EXPECT_EQ(s.precision, "bf16");
  // GPT-2 init starts near the uniform guess ln V; three steps on the same window fit it better.
  EXPECT_NEAR(before, std::log(50304.0), 0.5);
  ASSERT_TRUE(std::isfinite(s.test_loss));
  EXPECT_LT(s.test_loss, before - 0.5);
  fs::remove_all(dir);
}
