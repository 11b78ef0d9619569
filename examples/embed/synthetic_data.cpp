#include "synthetic_data.h"

SyntheticData::SyntheticData(int64_t n, strata::Generator& gen) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = i % classes;
    for (int64_t k = 0; k < dim; ++k)
      features.push_back(static_cast<float>(gen.normal(k / 2 == c ? 2.0 : 0.0, 1.0)));
    labels.push_back(c);
  }
}

strata::Tensor SyntheticData::x(int64_t begin, int64_t count) const {
  std::vector<float> rows(features.begin() + begin * dim, features.begin() + (begin + count) * dim);
  return strata::Tensor::from_vector(rows, {count, dim});
}

strata::Tensor SyntheticData::y(int64_t begin, int64_t count) const {
  std::vector<int64_t> rows(labels.begin() + begin, labels.begin() + begin + count);
  return strata::Tensor::from_vector_i64(rows, {count});
}
