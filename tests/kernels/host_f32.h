// f32 host buffers for the CPU kernel tests that call kernels directly
// (test_conv_dnnl, test_cpu_determinism): seeded uniform values in [-1, 1) and a
// view over a vector.
#pragma once
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "kernels/runtime/tensor_view.h"

namespace strata {

inline std::vector<float> random_vec(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

inline TensorView view(std::vector<float>& v, Shape s) { return {v.data(), DType::f32, std::move(s)}; }

}  // namespace strata
