#include "data/format/plan_rng.h"

namespace strata::data {

uint64_t PlanRng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t PlanRng::below(uint64_t n) {
  // Rejection sampling: no modulo bias, same result on every platform.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  for (;;) {
    uint64_t x = next();
    if (x < limit) return x % n;
  }
}

}  // namespace strata::data
