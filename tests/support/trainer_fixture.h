// Shared pieces of the trainer tests: a synthetic, learnable classification
// problem and a small config with all output off.
#pragma once
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/module.h"
#include "models/registry.h"
#include "train/config/train_config.h"
#include "train/trainer/memory_source.h"

namespace strata::testing {

// n samples of `dim` features (drawn from `seed`); the label is the argmax of a
// fixed random linear map shared by all seeds.
inline void synthetic_data(int64_t n, int64_t dim, int64_t classes, uint64_t seed, std::vector<float>& x,
                           std::vector<int64_t>& y) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::mt19937_64 wrng(12345);  // one labelling map for every split
  std::vector<float> w(static_cast<size_t>(dim * classes));
  for (auto& v : w) v = g(wrng);
  std::mt19937_64 rng(seed);
  x.resize(static_cast<size_t>(n * dim));
  y.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < dim; ++d) x[static_cast<size_t>(i * dim + d)] = g(rng);
    int64_t best = 0;
    float bv = -1e30f;
    for (int64_t c = 0; c < classes; ++c) {
      float s = 0;
      for (int64_t d = 0; d < dim; ++d)
        s += w[static_cast<size_t>(c * dim + d)] * x[static_cast<size_t>(i * dim + d)];
      if (s > bv) bv = s, best = c;
    }
    y[static_cast<size_t>(i)] = best;
  }
}

inline TrainConfig quiet_config() {
  TrainConfig c;
  c.model.name = "mlp";
  c.model.hidden = {32};
  c.model.dropout = 0.0;
  c.model.num_classes = 4;
  c.optimizer.name = "sgd";
  c.optimizer.lr = 0.1;
  c.optimizer.momentum = 0.9;
  c.optimizer.weight_decay = 0.0;
  c.schedule.name = "constant";
  c.trainer.epochs = 1;
  c.trainer.threads = 1;
  c.checkpoint.every_epochs = 0;
  c.logging.console = "off";
  c.logging.tensorboard = false;
  c.logging.every_steps = 0;
  return c;
}

inline std::shared_ptr<Module> build(const TrainConfig& c, std::vector<int64_t> shape) {
  return models::build_model(models::spec_from_config(c, std::move(shape)));
}

inline std::string temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("strata-trainer-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

}  // namespace strata::testing
