// Embedding: a table [V, D] looked up by i64 ids; (..) -> (.., D). Weight ~ N(0, 1)
// as PyTorch's default.
#pragma once
#include "core/module.h"
#include "core/random.h"

namespace strata {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, Generator* gen = nullptr);
  Tensor forward(const Tensor& ids) override;
  std::string type_name() const override { return "Embedding"; }
  const Tensor& weight() const { return weight_; }

 private:
  int64_t num_, dim_;
  Tensor weight_;
};

}  // namespace strata
