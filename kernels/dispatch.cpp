// Backend choice by device: the views of one op call must agree on where they
// live, and the backend that owns that device runs the kernel. No fallback: a
// CUDA view in a build without CUDA is an error, never a silent host copy.
#include <string>

#include "base/error.h"
#include "kernels/backends.h"

namespace strata {
namespace {

std::string where(const char* role, int i) { return std::string(role) + " " + std::to_string(i); }

// The device of the first defined view; throws when another defined view differs.
Device common_device(Op op, const TensorView* in, int nin, const TensorView* out, int nout,
                     const TensorView* extra = nullptr, const TensorView* extra2 = nullptr, int nextra2 = 0) {
  bool found = false;
  Device d = Device::cpu;
  std::string first;
  auto visit = [&](const TensorView& v, const std::string& role) {
    if (!v.defined()) return;
    if (!found) {
      found = true;
      d = v.device;
      first = role;
      return;
    }
    if (v.device != d)
      throw Error(std::string(op_info(op).name) + ": " + role + " is on " + device_name(v.device) + " but " +
                  first + " is on " + device_name(d) + " (mixed devices; move tensors with .to(Device))");
  };
  for (int i = 0; i < nin; ++i) visit(in[i], where("input", i));
  for (int i = 0; i < nout; ++i) visit(out[i], where("output", i));
  if (extra) visit(*extra, "grad_output");
  for (int i = 0; i < nextra2; ++i) visit(extra2[i], where("grad of input", i));
  return d;
}

}  // namespace

void kernel_forward(Op op, const OpAttrs& a, const TensorView* in, TensorView* out) {
  const OpInfo& info = op_info(op);
  if (common_device(op, in, info.inputs, out, info.outputs) == Device::cpu)
    return cpu_forward(op, a, in, out);
  cuda_backend().ops[static_cast<size_t>(op)].forward(a, in, out);
}

void kernel_backward(Op op, const OpAttrs& a, const TensorView* in, const TensorView* out,
                     const TensorView& grad_out, TensorView* grad_in) {
  const OpInfo& info = op_info(op);
  Device d = common_device(op, in, info.inputs, out, info.outputs, &grad_out, grad_in, info.inputs);
  if (d == Device::cpu) return cpu_backward(op, a, in, out, grad_out, grad_in);
  cuda_backend().ops[static_cast<size_t>(op)].backward(a, in, out, grad_out, grad_in);
}

}  // namespace strata
