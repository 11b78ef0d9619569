// Trains a small MLP on synthetic data through strata's public C++ API and prints
// the loss per epoch. Exits non-zero when the loss did not fall.
#include <cstdio>
#include <vector>

#include "core/autograd.h"
#include "core/modules/modules.h"
#include "core/ops.h"
#include "core/optim/adamw.h"
#include "core/random.h"

using namespace strata;

int main() {
  Generator gen(42);
  // Three classes, 8 features: class c has its mean at +2 in features 2c and 2c+1.
  const int64_t n = 384, d = 8, classes = 3, batch = 64;
  std::vector<float> xs;
  std::vector<int64_t> ys;
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = i % classes;
    for (int64_t k = 0; k < d; ++k) xs.push_back(static_cast<float>(gen.normal(k / 2 == c ? 2.0 : 0.0, 1.0)));
    ys.push_back(c);
  }

  Sequential model;
  model.emplace<Linear>(d, 32, true, &gen).emplace<ReLU>().emplace<Linear>(32, classes, true, &gen);
  AdamW opt(model.named_parameters(), AdamWOptions{.lr = 0.01, .weight_decay = 0.01});
  std::printf("model: %lld parameters\n", static_cast<long long>(model.num_parameters()));

  double first = 0.0, last = 0.0;
  for (int epoch = 1; epoch <= 10; ++epoch) {
    double total = 0.0;
    int batches = 0;
    for (int64_t b = 0; b < n; b += batch) {
      std::vector<float> xb(xs.begin() + b * d, xs.begin() + (b + batch) * d);
      std::vector<int64_t> yb(ys.begin() + b, ys.begin() + b + batch);
      Tensor x = Tensor::from_vector(xb, {batch, d});
      Tensor y = Tensor::from_vector_i64(yb, {batch});
      opt.zero_grad();
      Tensor loss = cross_entropy(model(x), y);
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
