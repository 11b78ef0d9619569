// Trains a small MLP on synthetic data through strata's public C++ API and prints
// the loss per epoch. Exits non-zero when the loss did not fall.
#include <strata/strata.h>

#include <cstdio>

#include "synthetic_data.h"

using namespace strata;

int main() {
  Generator gen(42);
  const int64_t n = 384, batch = 64;
  SyntheticData data(n, gen);

  Sequential model;
  model.emplace<Linear>(data.dim, 32, true, &gen)
      .emplace<ReLU>()
      .emplace<Linear>(32, data.classes, true, &gen);
  AdamW opt(model.named_parameters(), AdamWOptions{.lr = 0.01, .weight_decay = 0.01});
  std::printf("model: %lld parameters\n", static_cast<long long>(model.num_parameters()));

  double first = 0.0, last = 0.0;
  for (int epoch = 1; epoch <= 10; ++epoch) {
    double total = 0.0;
    int batches = 0;
    for (int64_t b = 0; b < n; b += batch) {
      opt.zero_grad();
      Tensor loss = cross_entropy(model(data.x(b, batch)), data.y(b, batch));
      loss.backward();
      opt.step();
      total += loss.item();
      ++batches;
    }
    double mean_loss = total / batches;
    if (epoch == 1) first = mean_loss;
    last = mean_loss;
    std::printf("epoch %2d  loss %.4f\n", epoch, mean_loss);
  }
  if (!(last < 0.5 * first)) {
    std::printf("FAILED: loss did not fall (%.4f -> %.4f)\n", first, last);
    return 1;
  }
  std::printf("OK: loss fell %.4f -> %.4f\n", first, last);
  return 0;
}
