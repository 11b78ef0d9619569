// The model registry: every registered model builds from one default-ish spec and
// has parameters (models/registry.h promises this check), and an unknown name is a
// ConfigError naming the registered ones.
#include "models/registry.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"

using namespace strata;

TEST(ModelRegistry, EveryRegisteredModelBuilds) {
  auto names = models::model_names();
  for (const char* n : {"mlp", "cnn", "gpt"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const auto& name : names) {
    models::ModelSpec s;
    s.name = name;
    s.input_shape = {1, 8, 8};
    s.hidden = {16};
    s.channels = {4};
    s.vocab_size = 32;
    s.context = 8;
    s.layers = 1;
    s.heads = 2;
    s.width = 8;
    auto m = models::build_model(s);
    ASSERT_TRUE(m) << name;
    EXPECT_GT(m->num_parameters(), 0) << name;
  }
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
