// strata's ResNet BasicBlock against an independent PyTorch implementation
// (tests/fixtures/make_resnet_block_golden.py): a block with a projection
// shortcut (4 -> 8 channels, stride 2) in training mode, with the same
// parameters and running statistics copied in by name, must give the same output,
// loss, parameter and input gradients, updated running statistics, and then the
// same eval-mode output, in FP32.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops.h"
#include "golden_expect.h"
#include "golden_file.h"
#include "models/resnet.h"

using namespace strata;
using namespace strata::testing;

namespace {

void copy_in(const NamedTensors& named, const std::map<std::string, Record>& g, const std::string& prefix) {
  size_t golden = 0;
  for (auto& [k, r] : g) golden += k.rfind(prefix, 0) == 0;
  EXPECT_EQ(named.size(), golden) << "the two blocks have different " << prefix << " sets";
  for (auto& [name, t] : named) {
    auto it = g.find(prefix + name);
    ASSERT_NE(it, g.end()) << "no golden " << prefix << name;
    ASSERT_EQ(it->second.shape, t.shape()) << name;
    Tensor src = Tensor::from_vector(it->second.f, t.shape());
    Tensor dst = t;  // a handle on the module's tensor
    dst.copy_(src);
  }
}

}  // namespace

TEST(ResNetBlockGolden, TrainingStepMatchesPyTorch) {
  auto g = load_golden(STRATA_RESNET_BLOCK_GOLDEN);
  const Shape& xs = g.at("x").shape;
  ASSERT_EQ(xs.size(), 4u);
  const int64_t c_out = g.at("out").shape[1];
  const int64_t stride = xs[2] / g.at("out").shape[2];
  Generator gen(0);  // the weights are overwritten from the file
  models::BasicBlock block(xs[1], c_out, stride, &gen);
  ASSERT_TRUE(block.has_projection());
  copy_in(block.named_parameters(), g, "param/");
  copy_in(block.named_buffers(), g, "buffer/");

  Tensor x = Tensor::from_vector(g.at("x").f, xs);
  x.set_requires_grad(true);
  block.train();
  Tensor out = block(x);
  ASSERT_EQ(out.shape(), g.at("out").shape);
  expect_close(out.to_float_vector(), g.at("out").f, 1e-5, "output");

  Tensor loss = sum(mul(out, Tensor::from_vector(g.at("r").f, out.shape())));
  const double want_loss = g.at("loss").f[0];
  EXPECT_NEAR(loss.item(), want_loss, 1e-5 * std::max(1.0, std::abs(want_loss)));
  loss.backward();
  for (auto& [name, p] : block.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name << " got no gradient";
    expect_close(p.grad().to_float_vector(), g.at("grad/" + name).f, 1e-5, "grad of " + name);
  }
  ASSERT_TRUE(x.grad().defined());
  expect_close(x.grad().to_float_vector(), g.at("input_grad").f, 1e-5, "input gradient");
  for (auto& [name, b] : block.named_buffers())
    expect_close(b.to_float_vector(), g.at("running/" + name).f, 1e-6, "running " + name);

  block.eval();
  expect_close(block(x).to_float_vector(), g.at("out_eval").f, 1e-5, "eval-mode output");
}
