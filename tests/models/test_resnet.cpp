// The ResNet (models/resnet.cpp): parameter count and names from the shapes,
// FLOPs against a count by hand, output shapes (odd sizes too), the zero-init
// residual start, gradients reaching every parameter, spec errors, and the
// shipped configs/resnet_fashion_mnist.yaml.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "base/error.h"
#include "core/ops.h"
#include "models/registry.h"
#include "models/resnet.h"
#include "nn/optim/sgd.h"
#include "train/config/load.h"

using namespace strata;

namespace {

models::ModelSpec resnet_spec(std::vector<int64_t> input, std::vector<int64_t> channels,
                              std::vector<int64_t> blocks, int64_t classes = 10) {
  models::ModelSpec s;
  s.name = "resnet";
  s.input_shape = std::move(input);
  s.channels = std::move(channels);
  s.blocks = std::move(blocks);
  s.num_classes = classes;
  s.seed = 3;
  return s;
}

// Every parameter's shape, from the architecture's definition.
std::map<std::string, Shape> expected_shapes(const models::ModelSpec& s) {
  std::map<std::string, Shape> m;
  int64_t c = s.channels[0];
  m["conv1.weight"] = {c, s.input_shape[0], 3, 3};
  m["bn1.weight"] = m["bn1.bias"] = {c};
  for (size_t i = 0; i < s.channels.size(); ++i) {
    const int64_t out = s.channels[i];
    for (int64_t j = 0; j < s.blocks[i]; ++j) {
      const std::string b = "layer" + std::to_string(i + 1) + "." + std::to_string(j) + ".";
      m[b + "conv1.weight"] = {out, c, 3, 3};
      m[b + "bn1.weight"] = m[b + "bn1.bias"] = {out};
      m[b + "conv2.weight"] = {out, out, 3, 3};
      m[b + "bn2.weight"] = m[b + "bn2.bias"] = {out};
      if ((i > 0 && j == 0) || c != out) {
        m[b + "downsample.0.weight"] = {out, c, 1, 1};
        m[b + "downsample.1.weight"] = m[b + "downsample.1.bias"] = {out};
      }
      c = out;
    }
  }
  m["fc.weight"] = {s.num_classes, c};
  m["fc.bias"] = {s.num_classes};
  return m;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string source_dir() {
  const char* dir = std::getenv("STRATA_SOURCE_DIR");
  return dir && *dir ? dir : STRATA_TEST_SOURCE_DIR;
}

}  // namespace

TEST(ResNet, ParametersAreTheArchitecturesShapes) {
  auto s = resnet_spec({1, 28, 28}, {8, 16, 32}, {2, 1, 2});
  auto model = models::build_model(s);
  auto want = expected_shapes(s);
  std::map<std::string, Shape> got;
  for (auto& [name, p] : model->named_parameters()) got[name] = p.shape();
  EXPECT_EQ(got, want);
  int64_t total = 0;
  for (auto& [name, shape] : want) total += numel(shape);
  EXPECT_EQ(model->num_parameters(), total);
  // Projections exactly where the shape changes: the first block of stages 2 and 3.
  EXPECT_FALSE(want.count("layer1.0.downsample.0.weight"));
  EXPECT_TRUE(want.count("layer2.0.downsample.0.weight"));
  EXPECT_FALSE(want.count("layer3.1.downsample.0.weight"));
  // Every BatchNorm keeps running statistics: 2 buffers per BN.
  size_t bns = 0;
  for (auto& [name, shape] : want)
    bns +=
        name.ends_with("bn1.weight") || name.ends_with("bn2.weight") || name.ends_with("downsample.1.weight");
  EXPECT_EQ(bns, 1u + 2 * 5 + 2);  // stem, 5 blocks, 2 projections
  EXPECT_EQ(model->named_buffers().size(), 2 * bns);
}

TEST(ResNet, FlopsMatchACountByHand) {
  // 1x8x8 input, stages of width 2 and 4, one block each, 3 classes. Multiply-adds:
  //   stem       1*2*9 * 8*8                    =  1152
  //   layer1.0   (2*2*9 + 2*2*9) * 8*8          =  4608
  //   layer2.0   (2*4*9 + 4*4*9 + 2*4) * 4*4    =  3584   (stride 2, projection)
  //   fc         4*3                            =    12
  auto s = resnet_spec({1, 8, 8}, {2, 4}, {1, 1}, 3);
  EXPECT_DOUBLE_EQ(models::model_entry("resnet").train_flops(s), 6.0 * (1152 + 4608 + 3584 + 12));
  EXPECT_EQ(models::model_entry("resnet").task, "classification");
  // 7x7: stride 2 gives 4x4 (ceil), as the convs compute it.
  auto odd = resnet_spec({1, 7, 7}, {2, 4}, {1, 1}, 3);
  EXPECT_DOUBLE_EQ(
      models::model_entry("resnet").train_flops(odd),
      6.0 * (1 * 2 * 9 * 49 + (2 * 2 * 9 * 2) * 49 + (2 * 4 * 9 + 4 * 4 * 9 + 2 * 4) * 16 + 4 * 3));
}

TEST(ResNet, OutputShapes) {
  Generator gen(1);
  auto s = resnet_spec({1, 28, 28}, {4, 8, 16}, {1, 1, 1});
  auto model = models::build_model(s);
  Tensor x = Tensor::normal({2, 1, 28, 28}, 0, 1, gen);
  EXPECT_EQ((*model)(x).shape(), (Shape{2, 10}));
  auto three = models::build_model(resnet_spec({3, 9, 11}, {4, 6}, {1, 2}, 5));
  EXPECT_EQ((*three)(Tensor::normal({3, 3, 9, 11}, 0, 1, gen)).shape(), (Shape{3, 5}));

  models::BasicBlock down(4, 8, 2, &gen);
  EXPECT_TRUE(down.has_projection());
  EXPECT_EQ(down(Tensor::normal({2, 4, 7, 7}, 0, 1, gen)).shape(), (Shape{2, 8, 4, 4}));
  models::BasicBlock same(4, 4, 1, &gen);
  EXPECT_FALSE(same.has_projection());
  EXPECT_EQ(same(Tensor::normal({2, 4, 5, 6}, 0, 1, gen)).shape(), (Shape{2, 4, 5, 6}));
  EXPECT_THROW(same(Tensor::normal({2, 3, 5, 6}, 0, 1, gen)), ShapeError);
}

TEST(ResNet, ZeroInitResidualBlocksStartAsTheIdentity) {
  Generator gen(2);
  models::BasicBlock block(4, 4, 1, &gen, /*zero_init_residual=*/true);
  Tensor x = relu(Tensor::normal({2, 4, 5, 5}, 0, 1, gen));  // a block's input is a ReLU output
  EXPECT_EQ(block(x).to_float_vector(), x.to_float_vector());
  // The built model zero-inits every block's bn2 scale and nothing else.
  auto model = models::build_model(resnet_spec({1, 8, 8}, {4, 8}, {2, 1}));
  for (auto& [name, p] : model->named_parameters()) {
    if (name.find("bn") == std::string::npos || name.find("weight") == std::string::npos) continue;
    bool zero = name.find("bn2.weight") != std::string::npos;
    for (float v : p.to_float_vector()) ASSERT_EQ(v, zero ? 0.0f : 1.0f) << name;
  }
}

TEST(ResNet, ASgdStepTrainsEveryParameter) {
  Generator gen(4);
  auto model = models::build_model(resnet_spec({1, 8, 8}, {4, 8}, {1, 1}, 3));
  Tensor x = Tensor::normal({6, 1, 8, 8}, 0, 1, gen);
  Tensor y = Tensor::from_vector_i64({0, 1, 2, 0, 1, 2}, {6});
  SGD opt(model->named_parameters(), SGDOptions{0.1, 0.9});
  std::vector<double> losses;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    Tensor loss = cross_entropy((*model)(x), y);
    loss.backward();
    losses.push_back(loss.item());
    if (step == 1)  // after one step the zero-initialised scales have moved and every branch is live
      for (auto& [name, p] : model->named_parameters()) {
        ASSERT_TRUE(p.grad().defined()) << name;
        double norm = 0;
        for (float g : p.grad().to_float_vector()) norm += double(g) * g;
        EXPECT_GT(norm, 0) << name << " gets no gradient";
      }
    opt.step();
  }
  EXPECT_LT(losses.back(), 0.1 * losses.front()) << "a 6-sample batch is not memorised";
}

TEST(ResNet, BadSpecsAreConfigErrors) {
  EXPECT_THROW(models::build_model(resnet_spec({28, 28}, {4}, {1})), ConfigError);
  EXPECT_THROW(models::build_model(resnet_spec({1, 28, 28}, {4, 8}, {1})), ConfigError);
  EXPECT_THROW(models::build_model(resnet_spec({1, 28, 28}, {}, {})), ConfigError);
  EXPECT_THROW(models::build_model(resnet_spec({1, 28, 28}, {4}, {0})), ConfigError);
  try {
    models::build_model(resnet_spec({1, 28, 28}, {4, 8, 16}, {2, 2}));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.blocks"), std::string::npos) << e.what();
  }
}

TEST(ResNet, TheFashionMnistConfigBuildsWithAugmentation) {
  TrainConfig c = load_config(source_dir() + "/configs/resnet_fashion_mnist.yaml");
  ASSERT_EQ(c.model.name, "resnet");
  EXPECT_GT(c.data.augment_crop_padding, 0);
  EXPECT_TRUE(c.data.augment_hflip);
  auto spec = models::spec_from_config(c, {1, 28, 28});
  EXPECT_EQ(spec.blocks, c.model.blocks);
  auto model = models::build_model(spec);
  int64_t total = 0;
  for (auto& [name, shape] : expected_shapes(spec)) total += numel(shape);
  EXPECT_EQ(model->num_parameters(), total);
}
