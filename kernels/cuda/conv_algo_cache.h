// The cuDNN convolution algorithm chosen per problem, found once and reused.
// Plain C++ (no cuDNN types: the algorithm and math type are stored as ints) so
// that the bookkeeping is tested on a machine without a GPU. The cache the CUDA
// conv2d kernels use is reached through conv_algo_cache_stats() (CUDA builds).
#pragma once
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "kernels/runtime/dtype.h"

namespace strata::cuda {

enum class ConvPass : uint8_t { forward, backward_data, backward_filter };

// Everything the choice depends on: the pass, dtype, shapes, stride and padding,
// whether f32 may use TF32, and the device.
struct ConvKey {
  ConvPass pass = ConvPass::forward;
  DType dtype = DType::f32;
  int64_t n = 0, c = 0, h = 0, w = 0;  // x [N, C, H, W]
  int64_t o = 0, kh = 0, kw = 0;       // w [O, C, kh, kw]
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  bool allow_tf32 = false;
  int device = 0;
  auto operator<=>(const ConvKey&) const = default;
};

struct ConvAlgo {
  int algo = 0;          // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  int math = 0;          // cudnnMathType_t the algorithm was timed with
  size_t workspace = 0;  // bytes it needs
  bool deterministic = true;
};

struct ConvAlgoCacheStats {
  uint64_t hits = 0;    // lookups answered from the cache
  uint64_t misses = 0;  // lookups that ran the search
  size_t entries = 0;
};

class ConvAlgoCache {
 public:
  // The algorithm for `key`; runs find() (which may throw: nothing is cached then)
  // on the first lookup of a key only. Concurrent first lookups search once.
  template <typename Find>
  ConvAlgo get(const ConvKey& key, Find&& find) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = algos_.find(key);
    if (it != algos_.end()) {
      ++stats_.hits;
      return it->second;
    }
    ConvAlgo a = find();
    ++stats_.misses;
    algos_.emplace(key, a);
    stats_.entries = algos_.size();
    return a;
  }
  ConvAlgoCacheStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  mutable std::mutex mu_;
  std::map<ConvKey, ConvAlgo> algos_;
  ConvAlgoCacheStats stats_;
};

// The counters of the cache behind the CUDA conv2d kernels (defined in conv.cu,
// so only in CUDA builds): a repeated shape shows up as a hit, not a new search.
ConvAlgoCacheStats conv_algo_cache_stats();

}  // namespace strata::cuda
