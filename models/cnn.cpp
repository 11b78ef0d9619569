// Small CNN: per entry of `channels` a block Conv3x3(pad 1)-BatchNorm-ReLU-MaxPool2,
// then flatten, Linear-ReLU(-Dropout) per `hidden` width, and a Linear head.
// Input (N, C, H, W); for Fashion-MNIST (N, 1, 28, 28) with channels [32, 64]
// the feature map is (N, 64, 7, 7).
#include "base/error.h"
#include "core/random.h"
#include "models/registry.h"
#include "nn/modules/modules.h"

namespace strata::models {
namespace {

std::shared_ptr<Module> build_cnn(const ModelSpec& s) {
  if (s.input_shape.size() != 3)
    throw ConfigError("model cnn: needs a (C, H, W) sample shape, got rank " +
                      std::to_string(s.input_shape.size()));
  Generator gen(s.seed);
  int64_t c = s.input_shape[0], h = s.input_shape[1], w = s.input_shape[2];
  auto net = std::make_shared<Sequential>();
  for (auto out : s.channels) {
    if (out <= 0) throw ConfigError("model.channels: must be positive, got " + std::to_string(out));
    net->emplace<Conv2d>(c, out, 3, 1, 1, false, &gen);
    net->emplace<BatchNorm2d>(out);
    net->emplace<ReLU>();
    net->emplace<MaxPool2d>(2, 2, 0);
    c = out;
    h /= 2;
    w /= 2;
  }
  net->emplace<Flatten>(1);
  int64_t in = c * h * w;
  for (auto hid : s.hidden) {
    net->emplace<Linear>(in, hid, true, &gen);
    net->emplace<ReLU>();
    if (s.dropout > 0) net->emplace<Dropout>(s.dropout, &gen);
    in = hid;
  }
  net->emplace<Linear>(in, s.num_classes, true, &gen);
  return net;
}

// Per layer, 3x the forward's multiply-adds times 2: a 3x3 same-padded conv at
// its block's input resolution does Cin * Cout * 9 * H * W, a Linear in * out.
// BatchNorm, ReLU and pooling are elementwise and left out.
double cnn_train_flops(const ModelSpec& s) {
  if (s.input_shape.size() != 3) return 0;
  double c = static_cast<double>(s.input_shape[0]), macs = 0;
  int64_t h = s.input_shape[1], w = s.input_shape[2];
  for (auto out : s.channels) {
    macs += c * static_cast<double>(out) * 9.0 * static_cast<double>(h * w);
    c = static_cast<double>(out);
    h /= 2;
    w /= 2;
  }
  double in = c * static_cast<double>(h * w);
  for (auto hid : s.hidden) {
    macs += in * static_cast<double>(hid);
    in = static_cast<double>(hid);
  }
  macs += in * static_cast<double>(s.num_classes);
  return 3 * 2 * macs;
}

}  // namespace

void register_cnn_model() { model_registry()["cnn"] = {build_cnn, cnn_train_flops, "classification"}; }

}  // namespace strata::models
