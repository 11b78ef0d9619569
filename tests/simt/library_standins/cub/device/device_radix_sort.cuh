// CUB's DeviceRadixSort::SortPairs for the emulated backend: a library call, so
// not emulated (listed in docs/cuda.md) but done by the host with the same
// contract: a stable ascending sort of keys[begin_bit, end_bit) carrying values,
// the first call (temp == nullptr) asking for the temporary size.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace cub {
struct DeviceRadixSort {
  template <typename K, typename V, typename N>
  static cudaError_t SortPairs(void* temp, size_t& temp_bytes, const K* keys_in, K* keys_out,
                               const V* values_in, V* values_out, N count, int begin_bit = 0,
                               int end_bit = sizeof(K) * 8, cudaStream_t = nullptr) {
    if (temp == nullptr) {
      temp_bytes = 1;
      return cudaSuccess;
    }
    const K mask = end_bit >= static_cast<int>(sizeof(K) * 8) ? ~K{0} : static_cast<K>((K{1} << end_bit) - 1);
    auto key = [&](size_t i) { return static_cast<K>((keys_in[i] & mask) >> begin_bit); };
    std::vector<size_t> order(static_cast<size_t>(count));
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
    for (size_t i = 0; i < order.size(); ++i) {
      keys_out[i] = keys_in[order[i]];
      values_out[i] = values_in[order[i]];
    }
    return cudaSuccess;
  }
};
}  // namespace cub
