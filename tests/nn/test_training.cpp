// End to end: a Sequential MLP learns a separable problem with SGD, and the
// gradient of a whole MLP loss matches central finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd.h"
#include "core/ops.h"
#include "nn/modules/modules.h"
#include "nn/optim/adamw.h"
#include "nn/optim/sgd.h"

using namespace strata;

namespace {

// Two Gaussian clusters in D dimensions at -1.5 and +1.5 (std 0.5): separable in practice.
void make_data(Generator& g, int64_t n, int64_t d, Tensor& x, Tensor& y) {
  std::vector<float> xv;
  std::vector<int64_t> yv;
  for (int64_t i = 0; i < n; ++i) {
    int64_t label = static_cast<int64_t>(g.next_u64() & 1);
    for (int64_t k = 0; k < d; ++k) xv.push_back(static_cast<float>(g.normal(label ? 1.5 : -1.5, 0.5)));
    yv.push_back(label);
  }
  x = Tensor::from_vector(xv, {n, d});
  y = Tensor::from_vector_i64(yv, {n});
}

std::shared_ptr<Sequential> mlp(int64_t in, int64_t hidden, int64_t out, Generator& g, bool smooth = false) {
  auto m = std::make_shared<Sequential>();
  m->emplace<Linear>(in, hidden, true, &g);
  if (smooth)
    m->emplace<GELU>();
  else
    m->emplace<ReLU>();
  m->emplace<Linear>(hidden, out, true, &g);
  return m;
}

}  // namespace

TEST(Training, MlpLearnsSeparableProblemWithSgd) {
  Generator g(2024);
  Tensor x, y;
  make_data(g, 128, 4, x, y);
  auto model = mlp(4, 16, 2, g);
  SGD opt(model->named_parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    opt.zero_grad();
    Tensor loss = cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  std::printf("MLP loss %.5f -> %.5f\n", first, last);
  EXPECT_LT(last, first / 10.0);
  // the trained model classifies fresh samples from the same distribution
  Tensor xt, yt;
  make_data(g, 200, 4, xt, yt);
  model->eval();
  NoGradGuard no_grad;
  auto logits = model->forward(xt).to_float_vector();
  auto labels = yt.to_i64_vector();
  int correct = 0;
  for (size_t i = 0; i < labels.size(); ++i)
    correct += (logits[2 * i + 1] > logits[2 * i]) == (labels[i] == 1);
  EXPECT_GE(correct, 196);
}

TEST(Training, SameSeedSameRunBitForBit) {
  auto run = [] {
    Generator g(77);
    Tensor x, y;
    make_data(g, 32, 3, x, y);
    auto model = mlp(3, 8, 2, g);
    AdamW opt(model->named_parameters(), AdamWOptions{.lr = 0.01});
    std::vector<float> losses;
    for (int s = 0; s < 10; ++s) {
      opt.zero_grad();
      Tensor loss = cross_entropy(model->forward(x), y);
      loss.backward();
      opt.step();
      losses.push_back(static_cast<float>(loss.item()));
    }
    return losses;
  };
  EXPECT_EQ(run(), run());
}

TEST(Training, SequentialMlpGradientMatchesCentralDifferences) {
  Generator g(5);
  Tensor x, y;
  make_data(g, 6, 3, x, y);
  auto model = mlp(3, 5, 3, g, /*smooth=*/true);
  auto loss_of = [&] { return cross_entropy(model->forward(x), y); };
  loss_of().backward();
  const double eps = 1e-2;  // f32 loss: roundoff ~6e-8/eps, truncation ~eps^2
  int checked = 0;
  for (auto& [name, p] : model->named_parameters()) {
    auto analytic = p.grad().to_float_vector();
    float* w = p.data<float>();
    for (int64_t i = 0; i < p.numel(); ++i) {
      NoGradGuard no_grad;
      float orig = w[i];
      w[i] = orig + static_cast<float>(eps);
      double up = loss_of().item();
      w[i] = orig - static_cast<float>(eps);
      double down = loss_of().item();
      w[i] = orig;
      double numeric = (up - down) / (2 * eps);
      double a = analytic[static_cast<size_t>(i)];
      EXPECT_NEAR(a, numeric, 1e-3 + 1e-2 * std::abs(numeric)) << name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(model->num_parameters()));
}

TEST(Training, SmallCnnGradientMatchesCentralDifferences) {
  Generator g(6);
  Sequential cnn;
  cnn.emplace<Conv2d>(1, 2, 3, 1, 1, true, &g)
      .emplace<GELU>()
      .emplace<GlobalAvgPool2d>()
      .emplace<Linear>(2, 3, true, &g);
  Tensor x = Tensor::uniform({2, 1, 4, 4}, -1, 1, g);
  Tensor y = Tensor::from_vector_i64({0, 2}, {2});
  auto loss_of = [&] { return cross_entropy(cnn.forward(x), y); };
  loss_of().backward();
  const double eps = 1e-2;
  for (auto& [name, p] : cnn.named_parameters()) {
    auto analytic = p.grad().to_float_vector();
    float* w = p.data<float>();
    for (int64_t i = 0; i < p.numel(); ++i) {
      NoGradGuard no_grad;
      float orig = w[i];
      w[i] = orig + static_cast<float>(eps);
      double up = loss_of().item();
      w[i] = orig - static_cast<float>(eps);
      double down = loss_of().item();
      w[i] = orig;
      double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[static_cast<size_t>(i)], numeric, 1e-3 + 1e-2 * std::abs(numeric))
          << name << "[" << i << "]";
    }
  }
}
