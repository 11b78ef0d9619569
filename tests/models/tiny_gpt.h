// A checkpoint of a small model, written as the trainer writes one: the model's
// parameters and buffers as FP32 /model tensors, /trainer/step, and the run's
// config as resolved YAML (train/config/to_yaml.h).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/module.h"
#include "core/random.h"
#include "models/registry.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/to_yaml.h"
#include "train/config/train_config.h"

namespace strata::test_ckpt {

inline TrainConfig gpt_config(int64_t vocab, int64_t context, int64_t layers = 2, int64_t heads = 2,
                              int64_t width = 16, int64_t seed = 7) {
  TrainConfig cfg;
  cfg.model.name = "gpt";
  cfg.model.vocab_size = vocab;
  cfg.model.context = context;
  cfg.model.layers = layers;
  cfg.model.heads = heads;
  cfg.model.width = width;
  cfg.seed = seed;
  return cfg;
}

inline Checkpoint checkpoint_of(const Module& model, const TrainConfig& cfg, int64_t step = 1) {
  Checkpoint ck;
  for (auto& [n, t] : model.named_parameters()) ck.model[n] = t.to(DType::f32);
  for (auto& [n, t] : model.named_buffers()) ck.model[n] = t.to(DType::f32);
  ck.ints[ckpt_key::step] = step;
  ck.resolved_yaml = to_yaml(cfg);
  return ck;
}

// Builds the config's model (input_shape for image models), saves it at `path`.
inline std::shared_ptr<Module> save_model_checkpoint(const TrainConfig& cfg,
                                                     const std::filesystem::path& path,
                                                     std::vector<int64_t> input_shape = {},
                                                     int64_t step = 1) {
  auto model = models::build_model(models::spec_from_config(cfg, std::move(input_shape)));
  save_checkpoint(checkpoint_of(*model, cfg, step), path);
  return model;
}

// Redraws the parameters: a freshly initialised GPT's tied head mostly predicts
// the last token again, whatever came before it. With block weights of N(0, 1)
// and small embeddings, the blocks dominate the residual stream and the next
// token depends on the whole window.
inline void scramble(Module& model, uint64_t seed) {
  Generator gen(seed);
  for (auto& [n, p] : model.named_parameters()) {
    const bool embedding = n.rfind("wte", 0) == 0 || n.rfind("wpe", 0) == 0;
    p.copy_(Tensor::normal(p.shape(), 0.0, embedding ? 0.1 : 1.0, gen));
  }
}

// A fresh directory under the system's temporary one, removed with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() /
              (tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

}  // namespace strata::test_ckpt
