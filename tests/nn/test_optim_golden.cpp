// Optimizers against PyTorch: golden/optim_golden.json (written by
// golden/make_optim_golden.py) holds, per case, the initial parameters, the
// gradient fed at every step (null: the parameter has no gradient that step), the
// learning rate of every step and the parameters torch.optim produced after it.
// We replay the same gradients and compare every step within 1e-6 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "core/random.h"
#include "nn/optim/adamw.h"
#include "nn/optim/sgd.h"

using namespace strata;
using json = nlohmann::json;

namespace {

const json& golden() {
  static const json j = [] {
    std::ifstream f(STRATA_OPTIM_GOLDEN);
    if (!f) throw IoError(std::string("cannot open ") + STRATA_OPTIM_GOLDEN);
    return json::parse(f);
  }();
  return j;
}

Tensor from_json(const json& values, const json& shape) {
  std::vector<float> v;
  for (auto& x : values) v.push_back(static_cast<float>(x.get<double>()));
  return Tensor::from_vector(v, shape.get<Shape>());
}

std::unique_ptr<Optimizer> make(const json& c, NamedTensors params) {
  const json& h = c["hyper"];
  if (c["optimizer"] == "sgd") {
    SGDOptions o;
    o.lr = h["lr"];
    o.momentum = h.value("momentum", 0.0);
    o.dampening = h.value("dampening", 0.0);
    o.weight_decay = h.value("weight_decay", 0.0);
    o.nesterov = h.value("nesterov", false);
    return std::make_unique<SGD>(std::move(params), o);
  }
  AdamWOptions o;
  o.lr = h["lr"];
  o.beta1 = h["beta1"];
  o.beta2 = h["beta2"];
  o.eps = h["eps"];
  o.weight_decay = h["weight_decay"];
  return std::make_unique<AdamW>(std::move(params), o);
}

// |got - want| <= 1e-6 |want|, with a floor of 1e-6 * 1e-3 for values that pass near zero
::testing::AssertionResult close(float got, double want) {
  double tol = 1e-6 * std::max(std::abs(want), 1e-3);
  if (std::abs(got - want) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << got << " want " << want << " (rel err " << std::abs(got - want) / std::abs(want) << ")";
}

struct Replay {
  std::map<std::string, Tensor> params;
  std::unique_ptr<Optimizer> opt;
};

Replay start(const json& c) {
  Replay r;
  NamedTensors named;
  for (auto& [k, shape] : c["shapes"].items()) {
    Tensor p = from_json(c["init"][k], shape).set_requires_grad();
    r.params[k] = p;
    named.emplace_back(k, p);
  }
  r.opt = make(c, named);
  return r;
}

void feed_step(Replay& r, const json& c, size_t i) {
  r.opt->set_lr(c["lr"][i].get<double>());
  for (auto& [k, p] : r.params) {
    const json& g = c["grads"][i][k];
    if (g.is_null())
      p.zero_grad();
    else
      p.set_grad(from_json(g, c["shapes"][k]));
  }
  r.opt->step();
}

class OptimGolden : public ::testing::TestWithParam<size_t> {};

}  // namespace

TEST_P(OptimGolden, MatchesPyTorchTrajectory) {
  const json& c = golden()["cases"][GetParam()];
  SCOPED_TRACE(c["name"].get<std::string>());
  Replay r = start(c);
  size_t steps = c["params"].size();
  double worst = 0.0;  // largest relative error seen, printed for the record
  for (size_t i = 0; i < steps; ++i) {
    feed_step(r, c, i);
    for (auto& [k, p] : r.params) {
      auto got = p.to_float_vector();
      const json& want = c["params"][i][k];
      ASSERT_EQ(got.size(), want.size());
      for (size_t e = 0; e < got.size(); ++e) {
        double w = want[e].get<double>();
        ASSERT_TRUE(close(got[e], w)) << "step " << i + 1 << " param " << k << "[" << e << "]";
        if (w != 0.0) worst = std::max(worst, std::abs(got[e] - w) / std::abs(w));
      }
    }
  }
  std::printf("%s: %zu steps, max relative error %.3g\n", c["name"].get<std::string>().c_str(), steps, worst);
  EXPECT_EQ(r.opt->step_count(), static_cast<int64_t>(steps));
}

TEST_P(OptimGolden, ResumesFromSavedState) {
  // run half the trajectory, save, restore into a fresh optimizer, finish: same end point
  const json& c = golden()["cases"][GetParam()];
  SCOPED_TRACE(c["name"].get<std::string>());
  size_t steps = c["params"].size(), half = steps / 2;
  Replay a = start(c);
  for (size_t i = 0; i < half; ++i) feed_step(a, c, i);
  OptimizerState saved = a.opt->state();
  Replay b = start(c);
  for (auto& [k, p] : b.params) p.copy_(a.params[k]);
  b.opt->load_state(saved);
  EXPECT_EQ(b.opt->step_count(), static_cast<int64_t>(half));
  for (size_t i = half; i < steps; ++i) feed_step(b, c, i);
  for (auto& [k, p] : b.params) {
    auto got = p.to_float_vector();
    for (size_t e = 0; e < got.size(); ++e)
      ASSERT_TRUE(close(got[e], c["params"][steps - 1][k][e].get<double>()));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, OptimGolden, ::testing::Range<size_t>(0, 7),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                           return golden()["cases"][i.param]["name"].get<std::string>();
                         });

TEST(Optimizer, GoldenFileCoversEveryCase) { EXPECT_EQ(golden()["cases"].size(), 7u); }

TEST(Optimizer, SkipsParametersWithoutGradAndNamesState) {
  Tensor a = Tensor::ones({3}).set_requires_grad(), b = Tensor::ones({2}).set_requires_grad();
  AdamW opt({{"a", a}, {"b", b}}, AdamWOptions{});
  a.set_grad(Tensor::ones({3}));
  opt.step();
  EXPECT_EQ(b.to_float_vector(), (std::vector<float>{1, 1}));  // untouched: no gradient
  EXPECT_NE(a.to_float_vector()[0], 1.0f);
  auto s = opt.state();
  EXPECT_EQ(s.step, 1);
  EXPECT_TRUE(s.tensors.count("a.exp_avg"));
  EXPECT_TRUE(s.tensors.count("a.exp_avg_sq"));
  EXPECT_TRUE(s.tensors.count("a.step"));
  EXPECT_FALSE(s.tensors.count("b.exp_avg"));
  s.tensors["a.exp_avg"].fill_(5.0);  // state() is a deep copy
  EXPECT_NE(opt.state().tensors["a.exp_avg"].to_float_vector()[0], 5.0f);
  s.tensors["nope.exp_avg"] = Tensor::zeros({3});
  EXPECT_THROW(opt.load_state(s), Error);
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optimizer, LearningRateAndArgumentChecks) {
  Tensor a = Tensor::ones({2}).set_requires_grad();
  SGD opt({{"a", a}}, SGDOptions{.lr = 0.5});
  EXPECT_EQ(opt.lr(), 0.5);
  opt.set_lr(0.25);
  a.set_grad(Tensor::ones({2}));
  opt.step();
  EXPECT_EQ(a.to_float_vector(), (std::vector<float>{0.75f, 0.75f}));
  EXPECT_THROW(opt.set_lr(-1.0), Error);
  EXPECT_THROW(SGD({{"a", a}}, SGDOptions{.lr = 0.1, .nesterov = true}), Error);  // Nesterov without momentum
  EXPECT_THROW(SGD({{"a", a}, {"a", a}}, SGDOptions{}), Error);                   // duplicate names
  EXPECT_THROW(AdamW({{"h", Tensor::ones({2}, DType::f16)}}, AdamWOptions{}), Error);  // not FP32
}

TEST(Optimizer, LargeTensorsSplitOverThreadsGiveTheSameResult) {
  // one element-wise update, so splitting over threads must not change a bit
  const int64_t n = 5 * kOptimizerGrain + 17;
  Generator g(4);
  Tensor p1 = Tensor::uniform({n}, -1, 1, g);
  Tensor gr = Tensor::uniform({n}, -1, 1, g);
  p1.set_requires_grad();
  Tensor small = Tensor::from_vector({p1.to_float_vector()[n - 1]}, {1});
  small.set_requires_grad();
  AdamW big({{"p", p1}}, AdamWOptions{}), one({{"p", small}}, AdamWOptions{});
  for (int s = 0; s < 3; ++s) {
    p1.set_grad(gr);
    small.set_grad(Tensor::from_vector({gr.to_float_vector()[n - 1]}, {1}));
    big.step();
    one.step();
  }
  EXPECT_EQ(p1.to_float_vector()[n - 1], small.to_float_vector()[0]);
}
