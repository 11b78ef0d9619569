// Three Gaussian classes in 8 features: class c has its mean at +2 in features 2c
// and 2c+1. Includes single strata headers, the form for a file that needs little.
#pragma once
#include <strata/core/random.h>
#include <strata/core/tensor.h>

#include <cstdint>
#include <vector>

struct SyntheticData {
  std::vector<float> features;  // [n, dim], row-major
  std::vector<int64_t> labels;  // [n]
  int64_t dim = 8;
  int64_t classes = 3;

  SyntheticData(int64_t n, strata::Generator& gen);
  // Rows [begin, begin + count) as tensors: x [count, dim] f32, y [count] i64.
  strata::Tensor x(int64_t begin, int64_t count) const;
  strata::Tensor y(int64_t begin, int64_t count) const;
};
