// conv2d in the emulated backend: on CUDA, cuDNN does it, and a library is not
// emulated; strata's CPU kernels stand in for it here, in FP32 (half operands are
// widened on the way in and rounded on the way out, as cuDNN computes them in
// FP32). docs/cuda.md lists what is not emulated.
#include <cstring>
#include <vector>

#include "kernels/backends.h"
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
  auto wi = widen(in, kInputs);
  auto wo = widen(out, 1);
  auto iv = views(wi), ov = views(wo);
  cpu_conv().forward(a, iv.data(), ov.data());
  wo[0].write_back();
}

void conv2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                     TensorView* gin) {
  auto wi = widen(in, kInputs);
  auto wo = widen(out, 1);
  Widened wg(g);
  auto wgi = widen(gin, kInputs);
  auto iv = views(wi), ov = views(wo), gv = views(wgi);
  cpu_conv().backward(a, iv.data(), ov.data(), wg.view, gv.data());
  for (auto& x : wgi) x.write_back();
}

}  // namespace strata::cuda
