#include "models/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "base/error.h"

namespace strata::models {

void check_sampling_options(const SamplingOptions& opt, int64_t vocab) {
  if (!(std::isfinite(opt.temperature) && opt.temperature > 0))
    throw ConfigError("sampling: temperature must be a finite number > 0, got " +
                      std::to_string(opt.temperature) + " (top_k 1 gives greedy decoding)");
  if (opt.top_k < 0 || opt.top_k > vocab)
    throw ConfigError("sampling: top_k must be in [1, " + std::to_string(vocab) + "] or 0 for all, got " +
                      std::to_string(opt.top_k));
}

int64_t sample_token(const float* logits, int64_t vocab, const SamplingOptions& opt, Generator& gen) {
  if (vocab < 1) throw ShapeError("sampling: empty logits row");
  check_sampling_options(opt, vocab);
  for (int64_t i = 0; i < vocab; ++i)
    if (std::isnan(logits[i]) || logits[i] == INFINITY)
      throw ShapeError("sampling: logit " + std::to_string(i) + " of " + std::to_string(vocab) + " is " +
                       std::to_string(logits[i]));
  // Ids by logit, largest first, ties by id; only the first k need ordering.
  const int64_t k = opt.top_k == 0 ? vocab : opt.top_k;
  std::vector<int64_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), int64_t{0});
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  ids.resize(static_cast<size_t>(k));
  const double top = logits[ids[0]];
  if (top == -INFINITY) throw ShapeError("sampling: every logit is -inf");
  // softmax(logits / T) over the kept ids, shifted by the largest for range
  std::vector<double> weight(ids.size());
  double total = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    total += weight[i] = std::exp((logits[ids[i]] - top) / opt.temperature);
  const double u = gen.uniform(0.0, 1.0) * total;
  double acc = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    acc += weight[i];
    if (u < acc) return ids[i];
  }
  // u is just below total; rounding in the running sum can leave it past acc
  for (size_t i = ids.size(); i-- > 0;)
    if (weight[i] > 0) return ids[i];
  return ids[0];
}

}  // namespace strata::models
