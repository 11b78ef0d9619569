#include "nn/modules/embedding.h"

#include "base/error.h"
#include "core/init.h"
#include "core/ops.h"

namespace strata {

Embedding::Embedding(int64_t num_embeddings, int64_t dim, Generator* gen) : num_(num_embeddings), dim_(dim) {
  if (num_embeddings <= 0 || dim <= 0)
    throw ShapeError("Embedding(" + std::to_string(num_embeddings) + ", " + std::to_string(dim) +
                     "): sizes must be positive");
  Tensor w = Tensor::empty({num_embeddings, dim});
  init::normal_(w, gen ? *gen : default_generator(), 0.0, 1.0);
  weight_ = register_parameter("weight", w);
}

Tensor Embedding::forward(const Tensor& ids) {
  if (ids.dtype() != DType::i64 && ids.dtype() != DType::i32)
    throw ShapeError("Embedding: ids must be i64 or i32, got " + ids.str());
  return embedding(ids, weight_);
}

}  // namespace strata
