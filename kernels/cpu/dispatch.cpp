// CPU dispatch: FP16/BF16 storage, FP32 arithmetic. Half buffers are widened to
// f32 scratch before the kernel and narrowed after it; f32 buffers pass through.
// cpu_forward and cpu_backward are what the CPU registers in the op table's
// dispatch stubs (kernels/backends.h).
#include <limits>
#include <vector>

#include "kernels/backends.h"
#include "kernels/runtime/half.h"

namespace strata {
namespace {

struct Widened {
  std::vector<std::vector<float>> scratch;

  TensorView widen(const TensorView& v, bool copy_in) {
    if (!v.defined() || !is_half(v.dtype)) return v;
    // outputs start as NaN, as on every backend, so a kernel that relies on
    // zeroed memory fails the op suite in f16/bf16 too
    auto& s = scratch.emplace_back(static_cast<size_t>(v.numel()), std::numeric_limits<float>::quiet_NaN());
    if (copy_in) {
      if (v.dtype == DType::f16)
        f16_to_f32(v.as<uint16_t>(), s.data(), s.size());
      else
        bf16_to_f32(v.as<uint16_t>(), s.data(), s.size());
    }
    return TensorView{s.data(), DType::f32, v.shape};
  }
};

void narrow(const TensorView& wide, const TensorView& dst) {
  if (!dst.defined() || !is_half(dst.dtype)) return;
  if (dst.dtype == DType::f16)
    f32_to_f16(wide.as<float>(), dst.as<uint16_t>(), static_cast<size_t>(dst.numel()));
  else
    f32_to_bf16(wide.as<float>(), dst.as<uint16_t>(), static_cast<size_t>(dst.numel()));
}

bool any_half(const TensorView* v, int n) {
  for (int i = 0; i < n; ++i)
    if (v[i].defined() && is_half(v[i].dtype)) return true;
  return false;
}

}  // namespace

void cpu_forward(Op op, const OpAttrs& a, const TensorView* in, TensorView* out) {
  const OpInfo& info = op_info(op);
  auto fn = cpu_backend().ops[static_cast<size_t>(op)].forward;
  if (!any_half(in, info.inputs) && !any_half(out, info.outputs)) return fn(a, in, out);
  Widened w;
  std::vector<TensorView> win(in, in + info.inputs), wout(out, out + info.outputs);
  for (auto& v : win) v = w.widen(v, true);
  for (auto& v : wout) v = w.widen(v, false);
  fn(a, win.data(), wout.data());
  for (int i = 0; i < info.outputs; ++i) narrow(wout[i], out[i]);
  // batch_norm updates its running statistics (inputs 3 and 4) in place
  if (op == Op::batch_norm)
    for (int i = 3; i < 5; ++i) narrow(win[i], in[i]);
}

void cpu_backward(Op op, const OpAttrs& a, const TensorView* in, const TensorView* out,
                  const TensorView& grad_out, TensorView* grad_in) {
  const OpInfo& info = op_info(op);
  auto fn = cpu_backend().ops[static_cast<size_t>(op)].backward;
  if (!any_half(in, info.inputs) && !any_half(out, info.outputs) && !any_half(&grad_out, 1) &&
      !any_half(grad_in, info.inputs))
    return fn(a, in, out, grad_out, grad_in);
  Widened w;
  std::vector<TensorView> win(in, in + info.inputs), wout(out, out + info.outputs);
  std::vector<TensorView> wgin(grad_in, grad_in + info.inputs);
  for (auto& v : win) v = w.widen(v, true);
  for (auto& v : wout) v = w.widen(v, true);
  TensorView wgo = w.widen(grad_out, true);
  for (auto& v : wgin) v = w.widen(v, false);
  fn(a, win.data(), wout.data(), wgo, wgin.data());
  for (int i = 0; i < info.inputs; ++i) narrow(wgin[i], grad_in[i]);
}

namespace cpu {
void register_op_table(OpTableStubs& s) {
  s.forward.set(Device::cpu, &cpu_forward);
  s.backward.set(Device::cpu, &cpu_backward);
}
}  // namespace cpu

}  // namespace strata
