// PlanRng: the deterministic generator behind every seeded order of the data
// layer (splitmix64): the loader's shard and sample shuffles, the augmentation
// draws, and the order strata-pack writes samples in. The standard library's
// distributions differ between implementations; this does not, so an order is
// the same on every build and platform (a checkpoint's position relies on it).
// It lives in format, the floor below the loader, so that packing can use it too.
#pragma once
#include <cstdint>

namespace strata::data {

class PlanRng {
 public:
  explicit PlanRng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  uint64_t below(uint64_t n);  // uniform in [0, n), n > 0

 private:
  uint64_t state_;
};

}  // namespace strata::data
