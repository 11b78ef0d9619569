// ResNet (see resnet.h). For Fashion-MNIST, (N, 1, 28, 28) with channels
// [32, 64, 128] gives feature maps of 28x28, 14x14 and 7x7, pooled to (N, 128).
#include "models/resnet.h"

#include <cmath>

#include "base/error.h"
#include "core/ops.h"
#include "models/registry.h"
#include "nn/modules/modules.h"

namespace strata::models {

BasicBlock::BasicBlock(int64_t in, int64_t out, int64_t stride, Generator* gen, bool zero_init_residual)
    : in_(in), out_(out) {
  conv1_ = register_module("conv1", std::make_shared<Conv2d>(in, out, 3, stride, 1, false, gen));
  bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(out));
  conv2_ = register_module("conv2", std::make_shared<Conv2d>(out, out, 3, 1, 1, false, gen));
  bn2_ = register_module("bn2", std::make_shared<BatchNorm2d>(out));
  if (stride != 1 || in != out) {
    auto d = std::make_shared<Sequential>();
    d->emplace<Conv2d>(in, out, 1, stride, 0, false, gen);
    d->emplace<BatchNorm2d>(out);
    downsample_ = register_module("downsample", d);
  }
  // Goyal et al. 2017 ("Accurate, Large Minibatch SGD", section 5.1): with the
  // residual branch's last scale at 0 every block starts as the identity (its
  // input is a ReLU output, so relu(0 + x) = x) and the network as a shallow one,
  // which tolerates the large early learning rates of a one-cycle or warmup
  // schedule. The branch still learns: bn2's scale gets a gradient from the first step.
  if (zero_init_residual)
    for (auto& [name, p] : bn2_->named_parameters())
      if (name == "weight") p.zero_();
}

Tensor BasicBlock::forward(const Tensor& x) {
  if (x.dim() != 4 || x.size(1) != in_)
    throw ShapeError("BasicBlock(" + std::to_string(in_) + " -> " + std::to_string(out_) + "): input " +
                     x.str() + " must be [N, " + std::to_string(in_) + ", H, W]");
  Tensor y = bn1_->forward_relu((*conv1_)(x));
  y = (*bn2_)((*conv2_)(y));
  Tensor shortcut = downsample_ ? (*downsample_)(x) : x;
  return relu(add(y, shortcut));
}

namespace {

class ResNet : public Module {
 public:
  ResNet(const ModelSpec& s, Generator& gen) {
    const int64_t c_in = s.input_shape[0];
    int64_t c = s.channels[0];
    conv1_ = register_module("conv1", std::make_shared<Conv2d>(c_in, c, 3, 1, 1, false, &gen));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(c));
    for (size_t i = 0; i < s.channels.size(); ++i) {
      auto stage = std::make_shared<Sequential>();
      for (int64_t j = 0; j < s.blocks[i]; ++j) {
        const int64_t stride = (i > 0 && j == 0) ? 2 : 1;
        stage->emplace<BasicBlock>(c, s.channels[i], stride, &gen, /*zero_init_residual=*/true);
        c = s.channels[i];
      }
      stages_.push_back(register_module("layer" + std::to_string(i + 1), stage));
    }
    if (s.dropout > 0) dropout_ = register_module("dropout", std::make_shared<Dropout>(s.dropout, &gen));
    fc_ = register_module("fc", std::make_shared<Linear>(c, s.num_classes, true, &gen));
  }

  Tensor forward(const Tensor& x) override {
    Tensor y = bn1_->forward_relu((*conv1_)(x));
    for (auto& stage : stages_) y = (*stage)(y);
    y = global_avg_pool2d(y);  // (N, C)
    if (dropout_) y = (*dropout_)(y);
    return (*fc_)(y);
  }
  std::string type_name() const override { return "ResNet"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::vector<std::shared_ptr<Sequential>> stages_;
  std::shared_ptr<Dropout> dropout_;
  std::shared_ptr<Linear> fc_;
};

void check_spec(const ModelSpec& s) {
  if (s.input_shape.size() != 3)
    throw ConfigError("model resnet: needs a (C, H, W) sample shape, got rank " +
                      std::to_string(s.input_shape.size()));
  for (auto d : s.input_shape)
    if (d <= 0) throw ConfigError("model resnet: sample shape must be positive, got " + std::to_string(d));
  if (s.channels.empty()) throw ConfigError("model.channels: resnet needs at least one stage");
  if (s.blocks.size() != s.channels.size())
    throw ConfigError("model.blocks: resnet needs one entry per model.channels entry (" +
                      std::to_string(s.channels.size()) + "), got " + std::to_string(s.blocks.size()));
  for (size_t i = 0; i < s.channels.size(); ++i) {
    if (s.channels[i] <= 0)
      throw ConfigError("model.channels: must be positive, got " + std::to_string(s.channels[i]));
    if (s.blocks[i] <= 0)
      throw ConfigError("model.blocks: must be positive, got " + std::to_string(s.blocks[i]));
  }
}

std::shared_ptr<Module> build_resnet(const ModelSpec& s) {
  check_spec(s);
  Generator gen(s.seed);
  return std::make_shared<ResNet>(s, gen);
}

// Per layer, 3x the forward's multiply-adds times 2 (as cnn_train_flops): a k x k
// conv does Cin * Cout * k^2 per output pixel, the head in * out. A stride-2 stage
// works at ceil(H/2) x ceil(W/2) (3x3 pad 1 and 1x1 pad 0 at stride 2 agree).
// BatchNorm, ReLU, the residual adds and the pooling are elementwise and left out.
double resnet_train_flops(const ModelSpec& s) {
  check_spec(s);
  double h = static_cast<double>(s.input_shape[1]), w = static_cast<double>(s.input_shape[2]);
  double c = static_cast<double>(s.channels[0]);
  double macs = static_cast<double>(s.input_shape[0]) * c * 9 * h * w;  // stem
  for (size_t i = 0; i < s.channels.size(); ++i) {
    const double out = static_cast<double>(s.channels[i]);
    for (int64_t j = 0; j < s.blocks[i]; ++j) {
      const bool down = i > 0 && j == 0;
      if (down) h = std::ceil(h / 2), w = std::ceil(w / 2);
      macs += (c * out * 9 + out * out * 9) * h * w;
      if (down || c != out) macs += c * out * h * w;  // projection shortcut
      c = out;
    }
  }
  macs += c * static_cast<double>(s.num_classes);
  return 3 * 2 * macs;
}

}  // namespace

void register_resnet_model() {
  model_registry()["resnet"] = {build_resnet, resnet_train_flops, "classification"};
}

}  // namespace strata::models
