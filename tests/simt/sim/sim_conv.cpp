// conv2d in the emulated backend, split as conv.cu splits it: the convolution is
// cuDNN's there, and a library is not emulated, so strata's CPU kernels stand in
// for it here, in FP32 (half operands are widened on the way in and y, dx, dw
// rounded on the way out, as cuDNN computes them in FP32), without the bias;
// the bias and its gradient are conv_bias.cu's kernels, which run emulated, on
// the rounded y and on dy, as on the device.
#include <cstring>
#include <vector>

#include "kernels/backends.h"
#include "kernels/cuda/conv_bias.h"
#include "kernels/runtime/half.h"

namespace strata::cuda {
namespace {

// A view's f32 copy: its own data when it is f32 already.
struct Widened {
  std::vector<float> data;
  TensorView view;
  const TensorView* from = nullptr;
  explicit Widened(const TensorView& v) : view(v), from(&v) {
    view.device = Device::cpu;
    if (!v.defined() || v.dtype != DType::f16 && v.dtype != DType::bf16) return;
    data.resize(static_cast<size_t>(v.numel()));
    if (v.dtype == DType::f16)
      f16_to_f32(v.as<const uint16_t>(), data.data(), data.size());
    else
      bf16_to_f32(v.as<const uint16_t>(), data.data(), data.size());
    view.data = data.data();
    view.dtype = DType::f32;
  }
  void write_back() const {
    if (data.empty()) return;
    if (from->dtype == DType::f16)
      f32_to_f16(data.data(), from->as<uint16_t>(), data.size());
    else
      f32_to_bf16(data.data(), from->as<uint16_t>(), data.size());
  }
};

std::vector<Widened> widen(const TensorView* v, size_t n) {
  std::vector<Widened> w;
  w.reserve(n);
  for (size_t i = 0; i < n; ++i) w.emplace_back(v[i]);
  return w;
}
std::vector<TensorView> views(const std::vector<Widened>& w) {
  std::vector<TensorView> v;
  for (auto& x : w) v.push_back(x.view);
  return v;
}
const OpKernels& cpu_conv() { return cpu_backend().ops[static_cast<size_t>(Op::conv2d)]; }
constexpr size_t kInputs = 3;  // x, w, b

}  // namespace

void conv2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  if (out[0].numel() == 0) return;
  if (in[0].size(1) == 0) {  // no input channel: y is the bias alone, as conv.cu does it
    std::memset(out[0].data, 0, out[0].bytes());
  } else {
    auto wi = widen(in, kInputs);
    auto wo = widen(out, 1);
    auto iv = views(wi), ov = views(wo);
    // the CPU conv reads a bias; zeros make it the convolution alone
    std::vector<float> no_bias(static_cast<size_t>(in[1].size(0)), 0.0f);
    iv[2] = TensorView{no_bias.data(), DType::f32, {in[1].size(0)}, Device::cpu};
    cpu_conv().forward(a, iv.data(), ov.data());
    wo[0].write_back();
  }
  conv_bias::add(in[2], out[0]);
}

void conv2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                     TensorView* gin) {
  auto wi = widen(in, kInputs);
  auto wo = widen(out, 1);
  Widened wg(g);
  auto wgi = widen(gin, kInputs);
  auto iv = views(wi), ov = views(wo), gv = views(wgi);
  gv[2] = TensorView{};  // the bias gradient is conv_bias.cu's, below
  cpu_conv().backward(a, iv.data(), ov.data(), wg.view, gv.data());
  for (size_t i = 0; i + 1 < kInputs; ++i) wgi[i].write_back();
  if (gin[2].defined()) conv_bias::grad(g, gin[2]);
}

}  // namespace strata::cuda
