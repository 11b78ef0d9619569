// Seeded random number generation. Every random draw in strata goes through a
// Generator whose seed and state are recorded (checkpoints save the state).
#pragma once
#include <cstdint>
#include <random>
#include <string>

namespace strata {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed), engine_(seed) {}
  uint64_t seed() const { return seed_; }
  void reseed(uint64_t seed) {
    seed_ = seed;
    engine_.seed(seed);
  }
  uint64_t next_u64() { return engine_(); }
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(engine_); }
  double normal(double mean, double stddev) {
    return std::normal_distribution<double>(mean, stddev)(engine_);
  }
  // Full engine state as text (std::mt19937_64 stream format), for checkpoints.
  std::string state() const;
  void set_state(const std::string& s);

 private:
  uint64_t seed_;
  std::mt19937_64 engine_;
};

// The process-wide generator used by module initialisers unless one is passed.
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace strata
