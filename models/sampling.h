// Choosing the next token from a row of logits: divide by the temperature, keep
// the top_k largest (0: all), softmax over those, draw one with a seeded
// Generator. Used by strata-generate through generate_tokens (models/generate.h).
#pragma once
#include <cstdint>
#include <vector>

#include "core/random.h"

namespace strata::models {

struct SamplingOptions {
  double temperature = 1.0;  // > 0; below 1 sharpens, above 1 flattens
  int64_t top_k = 0;         // in [1, vocab], or 0 for the whole vocabulary
};

// ConfigError naming the option when temperature is not a finite value > 0 or
// top_k is outside [0, vocab].
void check_sampling_options(const SamplingOptions& opt, int64_t vocab);

// The sampled token id in [0, vocab). Ties at the top-k boundary keep the lower
// ids, so top_k = 1 is argmax (the lowest id among equal maxima). Logits may be
// -inf (never drawn); a NaN or +inf logit is a ShapeError naming its index.
// Draws exactly one uniform number from `gen` per call.
int64_t sample_token(const float* logits, int64_t vocab, const SamplingOptions& opt, Generator& gen);
inline int64_t sample_token(const std::vector<float>& logits, const SamplingOptions& opt, Generator& gen) {
  return sample_token(logits.data(), static_cast<int64_t>(logits.size()), opt, gen);
}

}  // namespace strata::models
