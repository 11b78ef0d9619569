// The model registry: every registered model builds from one default-ish spec and
// has parameters (models/registry.h promises this check), and an unknown name is a
// ConfigError naming the registered ones.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"
#include "models/registry.h"

using namespace strata;

TEST(ModelRegistry, EveryRegisteredModelBuilds) {
  auto names = models::model_names();
  for (const char* n : {"mlp", "cnn", "resnet", "gpt"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const auto& name : names) {
    models::ModelSpec s;
    s.name = name;
    s.input_shape = {1, 8, 8};
    s.hidden = {16};
    s.channels = {4};
    s.blocks = {1};
    s.vocab_size = 32;
    s.context = 8;
    s.layers = 1;
    s.heads = 2;
    s.width = 8;
    auto m = models::build_model(s);
    ASSERT_TRUE(m) << name;
    EXPECT_GT(m->num_parameters(), 0) << name;
    EXPECT_GT(models::model_entry(name).train_flops(s), 0) << name;
    auto task = models::model_entry(name).task;
    EXPECT_TRUE(task == "classification" || task == "causal_lm") << name << ": " << task;
  }
}

// The FLOPs counters restate each model's shapes; the parameter count they imply
// must be the built model's. MLP: 6 per weight (one multiply-add per weight per
// sample, times 3). GPT: N + the position table = num_parameters.
TEST(ModelRegistry, FlopsAgreeWithTheParameterCount) {
  models::ModelSpec mlp;
  mlp.name = "mlp";
  mlp.input_shape = {1, 28, 28};
  mlp.hidden = {64, 32};
  mlp.num_classes = 10;
  double weights = 784.0 * 64 + 64.0 * 32 + 32.0 * 10;
  EXPECT_DOUBLE_EQ(models::model_entry("mlp").train_flops(mlp), 6 * weights);
  EXPECT_EQ(models::build_model(mlp)->num_parameters(), static_cast<int64_t>(weights) + 64 + 32 + 10);

  models::ModelSpec gpt;
  gpt.name = "gpt";
  gpt.vocab_size = 96;
  gpt.context = 16;
  gpt.layers = 2;
  gpt.heads = 2;
  gpt.width = 32;
  double flops = models::model_entry("gpt").train_flops(gpt);
  double n = (flops - 12.0 * 2 * 16 * 32) / 6;
  EXPECT_DOUBLE_EQ(n + 16.0 * 32, static_cast<double>(models::build_model(gpt)->num_parameters()));

  models::ModelSpec cnn;  // one conv block 1->4 on 8x8, pooled to 4x4, head 64->10
  cnn.name = "cnn";
  cnn.input_shape = {1, 8, 8};
  cnn.channels = {4};
  cnn.hidden = {};
  EXPECT_DOUBLE_EQ(models::model_entry("cnn").train_flops(cnn), 6 * (1.0 * 4 * 9 * 64 + 64.0 * 10));
}

TEST(ModelRegistry, UnknownNameListsTheKnownOnes) {
  models::ModelSpec s;
  s.name = "transformer-xl";
  try {
    models::build_model(s);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gpt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("transformer-xl"), std::string::npos) << e.what();
  }
}
